Me gustan los gatos y los perros.
A ella le gustan los árboles del jardín.
Les gusta la playa.
El dormitorio es muy grande.
¿Dónde está la cocina en el piso nuevo?
Abre la puerta a tu abuelo, por favor.
Los libros están en la estantería.
Nuestro piso tiene dos dormitorios.
El café está muy caliente.
Como arroz con verduras.
Él está haciendo la cena.
¿Quieres un poco de queso?
Desayunamos en el hotel.
El restaurante abre a la una.
Está nevando en la montaña.
Ayer hizo mucho frío.
Hoy el sol es muy fuerte.
Son las seis.
El banco abre a las ocho.
Mañana es domingo y el mercado está cerrado.
Mi madre es muy amable.
Su hermana es médica.
Las niñas están en la playa.
Hoy estoy muy cansado después del examen.
Está contento con su nuevo trabajo.
¿Tienes hambre ahora, Carlos?
Ella trabaja en una tienda.
Termino de trabajar a las seis.
Los niños tienen muchos deberes.
No entiendo esta palabra de la carta.
El colegio es muy antiguo.
¿Dónde está el autobús del aeropuerto?
La estación está cerca del hotel.
Viajamos en autobús a Sevilla.
Necesito un mapa de la ciudad.
El tren a Toledo sale a las nueve.
¿Cuánto cuesta la camisa?
Este abrigo me queda grande.
Compré una chaqueta azul.
Hoy el supermercado está abierto.
Me duele el pie izquierdo.
Mi marido está resfriado.
Deberías beber más té.
Los domingos salgo a correr.
Mi sobrina canta muy bien.
Ayer fuimos al cine.
El gato está en la cocina.
A mi perro le gusta el parque.
Los caballos están corriendo.
Los árboles son muy viejos.
Hoy el mar está muy azul.
¿Cómo se llama el perro de tu hermana?
¿Dónde trabaja tu hermano?
No cierres la ventana.
Siéntate aquí, por favor.
Nunca he visto una ballena.
Mañana iremos a la playa.
Antes vivía en Madrid.
Él ya se ha ido.
Vamos a pintar la cocina.
Mi ordenador no funciona.
Creo que ella tiene razón.
¡Qué buena idea!
Hoy la ciudad está muy tranquila.
El puente es muy antiguo.
Leo un libro cada semana.
Necesitamos más tiempo para el examen.
Vinieron en avión.
Mi hijo quiere aprender a nadar.
Habla dos idiomas.
¿Puedes cerrar la puerta del garaje?
Perdí las llaves en la playa.
El bebé está durmiendo en el coche.
Mi abuelo vive cerca del mar.
El concierto empieza a las nueve.
Es muy temprano para comer.
Tengo dos hermanas.
Hay tres perros en la calle.
Ella conduce un coche rojo.
El parque es muy grande.
Nos quedamos en el hotel una semana.
Anoche me acosté temprano.
Las flores son rojas y blancas.
No tengo perro, pero tengo un gato.
No hay nadie en la oficina.
¿Quién quiere té?
¿Cuándo abre el museo?
Esta noche cocinaré yo.
Fuimos andando a la estación.
El bosque es muy grande.
Aquí la playa es muy larga.
Por la mañana siempre tomo café.
Mi amigo vive en Valencia.
Él llamó a su padre.
Hoy el tren llega tarde.
Juegan al tenis los sábados.
Voy al mercado con mi tía.
Está escribiendo una carta en la cocina.
Nos gusta pasear por el bosque.
Hoy hace muy buen tiempo en el norte.
