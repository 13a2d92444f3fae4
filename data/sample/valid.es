Me gustan las manzanas verdes.
A mi hermano le gustan los árboles.
Nos gusta el río.
La cocina es muy pequeña.
¿Dónde están mis zapatos?
Cierra la ventana del dormitorio, por favor.
La lámpara está en el escritorio.
Tenemos un jardín grande.
La sopa de pescado está fría.
Por la tarde tomo té.
Ella está haciendo un pastel.
¿Quieres más pan?
Comimos pescado en la playa.
El camarero trajo la cuenta.
Está lloviendo otra vez en el pueblo.
Mañana hará calor.
Hoy el viento es muy fuerte.
Son las cuatro.
La tienda abre a las nueve.
Hoy es viernes, diez de mayo.
Mi hermana es muy alta.
Su padre es profesor.
Los niños están en el parque.
Hoy estoy muy contento.
Ella está cansada después del trabajo.
¿Estás triste por el partido?
Trabajo en un colegio.
Empieza a trabajar a las ocho.
Los alumnos tienen un examen hoy.
No entiendo la tercera pregunta.
La profesora está en el aula.
¿Dónde está la estación de autobuses?
El hotel está cerca de la playa.
Viajamos en tren a Madrid.
Necesito un billete para mañana.
El avión sale a las siete.
¿Cuánto cuesta el bolso?
Estos zapatos marrones me quedan pequeños.
Compré un vestido rojo.
Hoy el mercado está cerrado.
Me duele la cabeza después de la reunión.
Ella tiene tos.
Deberías descansar esta tarde.
Los sábados voy a nadar.
Su hijo toca muy bien el piano.
Anoche vimos una película.
El perro está en el jardín.
A mi gato le gusta el pescado.
Los pájaros están cantando en el jardín.
En verano los árboles están verdes.
El lago es muy bonito.
¿Cómo se llama tu hermano?
¿Dónde viven tus padres?
No abras la puerta a desconocidos.
Espera aquí, por favor.
Nunca he estado en México.
La semana que viene visitaremos a nuestros abuelos.
Antes jugaba al tenis con mi tío.
Ella ya ha comido.
Van a vender su casa.
Mi móvil nuevo no funciona.
Creo que el viaje es una buena idea.
¡Qué casa tan bonita junto al mar!
La calle es muy tranquila.
La iglesia es muy antigua.
Leo el periódico los domingos.
Necesitamos más agua.
Vinieron en coche.
Quiero aprender a cocinar.
Ella habla tres idiomas.
¿Puedes abrir la puerta?
He perdido el paraguas en el autobús.
El bebé de los vecinos está llorando.
Mi abuela vive en el pueblo.
La película empieza a las ocho.
Es muy tarde para un café.
Tengo tres primos en Argentina.
Hay dos gatos en el jardín.
Conduce un coche blanco.
El museo es muy grande.
Nos quedamos en casa todo el día.
Esta mañana me levanté tarde y perdí el autobús.
Las flores del jardín son amarillas.
En Madrid no tengo coche.
El sábado por la mañana no hay nadie en casa.
¿Quién quiere café?
¿Cuándo cierra la tienda?
Yo compraré el pan.
Fuimos andando a la playa.
El río es muy largo.
Aquí las montañas son muy altas.
Siempre bebo agua en la comida.
Mi amigo vive en Barcelona.
Ella llamó a su madre.
El autobús llega tarde otra vez.
Juegan al fútbol los domingos.
Voy al banco.
Está leyendo un libro en el jardín.
En verano nos gusta comer fuera.
Hoy hace mal tiempo.
