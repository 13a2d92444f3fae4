Me gustan los árboles.
Me gustan mucho los perros.
Me gustan los gatos y los pájaros.
A ella le gustan los árboles.
A él le gustan los árboles.
Nos gustan los árboles.
Les gustan los árboles del parque.
¿Te gustan los árboles?
No me gustan los árboles.
Me gustan los árboles altos.
A mi madre le gustan las flores.
Me gusta el café fuerte sin azúcar.
Me gusta esta canción.
A ella le gustan los perros.
Nos gustan los gatos.
¿Te gustan los gatos?
A él no le gustan los perros.
Me gusta leer por la noche.
A mi hermano le gusta el fútbol.
Les gusta nadar en el mar.
Me gusta mucho tu casa.
¿Te gusta el té verde?
En invierno no me gusta la sopa fría.
Nos gusta pasear por el río.
A mi padre le gustan las películas antiguas.
A los niños les gusta el helado de limón.
Me gusta el sonido de la lluvia.
A ella le gusta cantar en la ducha.
No nos gusta la música alta.
¿Les gusta el nuevo profesor?
Me gustan más las manzanas rojas que las verdes.
¿Cuál te gusta?
Me gustó mucho la película.
¿Te gustó la sopa?
A mi abuela le gustaba cocinar.
Me encantan los árboles.
Me encanta esta ciudad.
Ella quiere mucho a su gato.
Prefiero el té.
Prefiero quedarme en casa hoy.
¿Prefieres la playa o la montaña?
Mi casa es pequeña pero luminosa.
Nuestra casa tiene tres dormitorios.
La cocina está muy limpia.
¿Dónde está el baño en esta casa?
El baño está a la izquierda.
Las llaves del coche están en la mesa de la cocina.
No encuentro las llaves de casa por ningún lado.
Cierra la puerta del jardín, por favor.
Abre la ventana.
La ventana está abierta.
La puerta principal está cerrada.
Apaga la luz del pasillo.
Enciende la lámpara, por favor.
El sofá es muy cómodo.
Mi habitación está arriba.
Nuestro jardincito está detrás de la casa.
Vivimos en el tercer piso.
Nuestros vecinos son muy amables.
La casa es vieja pero bonita.
Estoy limpiando el suelo de la cocina.
¿Quién está en la puerta tan temprano?
Hay un gato debajo de la cama.
La cama es demasiado dura.
Necesito una silla nueva.
La mesa es de madera.
Hay cuatro sillas en la cocina.
Pintamos las paredes de blanco.
La nevera está casi vacía.
Pon la leche en la nevera.
La lavadora está rota.
¿Puedes lavar los platos?
Voy a hacer la cama.
Mi hermana barre el suelo todos los días.
La casa huele a pan recién hecho.
Hay un espejo en el pasillo.
Las escaleras son muy estrechas.
Tenemos un balcón pequeño.
Las plantas del balcón necesitan agua.
Riego las plantas los domingos.
¿Hay agua caliente en la ducha?
La calefacción no funciona.
Hace frío en el salón.
El salón es luminoso.
Dejé mi bolso en el coche.
Nuestro piso está cerca de la estación.
Se mudan de casa la semana que viene.
Compramos una casa nueva el año pasado.
El alquiler es muy caro.
Comparto piso con dos amigos.
Quítate los zapatos, por favor.
Pasa y siéntate en el sofá.
Estás en tu casa, Ana.
Las toallas están en el armario.
¿Dónde guardas los vasos?
Los vasos están encima del fregadero.
El perro duerme en el jardín.
Mis llaves estaban en mi bolsillo.
Alguien está llamando a la puerta de la cocina.
El tejado necesita arreglos.
Voy a pintar mi habitación de azul.
No dejes abierta la puerta de la nevera.
La casa está tranquila por la noche.
Oigo al perro de los vecinos.
Las cortinas son amarillas.
Necesitamos una mesa más grande.
El ascensor no funciona hoy.
Siempre me olvido el paraguas en casa.
Nuestra casa tiene una puerta roja.
La ventana del dormitorio da al mar.
Me gusta sentarme en el balcón por la tarde.
Está arreglando el grifo del baño.
¿Dónde has puesto el mando a distancia?
La televisión está demasiado alta.
¿Puedes bajar el volumen de la radio?
Hay libros por todas partes en su piso.
La casa está lejos del centro de la ciudad.
Mis padres tienen una casa en el campo.
Pasamos el verano en el pueblo.
Quiero una casa con jardín.
El garaje está lleno de cajas.
Ella guarda su bicicleta en el pasillo.
Limpia la mesa, por favor.
Tengo que sacar la basura.
El cubo de la basura está lleno.
¿Quién ha dejado la luz encendida?
El reloj de la cocina va atrasado.
La alfombra es nueva.
Tenemos dos baños.
Mi escritorio está al lado de la ventana.
Duermo mejor en mi propia cama.
Los invitados llegan a las ocho.
Ordenemos el salón antes de que vengan.
Tengo mucha hambre después del paseo.
Tengo sed después de correr.
¿Tenéis hambre, niños?
Todavía no tenemos hambre.
¿Qué hay para cenar?
Cenamos pescado.
Como pan todas las mañanas.
Ella no come carne.
Él bebe mucha agua.
Tomo café con leche.
La sopa de tomate está demasiado caliente.
Mi café ya está frío.
Este pastel está delicioso.
El pan de esta panadería siempre es fresco.
Pásame la sal y el aceite, por favor.
¿Quieres un poco más de arroz?
No quiero más, gracias, estoy lleno.
Estoy haciendo una ensalada.
Corta los tomates en trozos pequeños.
Añade un poco de aceite y sal.
Las patatas necesitan veinte minutos.
Mi padre cocina los sábados.
No sé cocinar muy bien.
Ella hace la mejor paella del pueblo.
Comemos a las dos.
El desayuno está listo en la cocina.
Los huevos están en la nevera.
Quisiera un zumo de naranja grande.
¿Quieres azúcar en el té?
No queda leche para el café.
Tenemos que comprar pan y queso.
El pollo está en el horno.
No toques la sartén, que está caliente.
Se me ha quemado la tostada.
El camarero trae la carta.
¿Podemos ver la carta, por favor?
Una mesa para dos, por favor.
¿Qué pescado nos recomienda hoy?
Yo tomaré el pescado.
La cuenta de la mesa seis, por favor.
¿Está incluido el servicio?
El restaurante está lleno esta noche.
Reservamos una mesa para las nueve.
Aquí la comida es muy buena.
Este vino es de la Rioja.
No bebo alcohol.
Ella es alérgica a los frutos secos.
¿Este plato lleva carne?
Mi hermana es vegetariana.
Mi fruta favorita es el melocotón.
Los plátanos maduros son amarillos.
Las fresas están muy dulces.
Este limón está muy ácido.
Me como una manzana cada día.
Los niños toman leche en el desayuno.
Anoche cenamos pizza.
Mañana comerán en el restaurante.
Nunca he probado el pulpo.
¿Ya has comido, Pablo?
Comí demasiado pastel en la fiesta.
El queso huele fuerte.
Hagamos una tarta para su cumpleaños.
La tarta lleva tres huevos.
Mezcla la harina con el azúcar.
Lava primero las verduras.
El agua está hirviendo.
Echa la pasta en el agua.
El arroz está listo en quince minutos.
Me gusta el filete muy hecho.
¿Cómo te gusta el café?
Fritos, por favor.
Esta salsa pica un poco.
Le pone demasiada sal a todo.
Los lunes siempre tomamos sopa.
La abuela hace pan en casa.
La panadería abre a las siete.
Compré dos barras de pan.
¿Quieres un bocadillo?
Te hago un bocadillo.
La comida estuvo excelente.
Hoy la cena será tarde.
Esta mañana no he desayunado porque llegaba tarde.
Ella toma el té sin azúcar.
Mi vaso está vacío otra vez.
Llena la jarra de agua.
¿Se puede beber el agua?
Bebimos limonada en el jardín.
El melón todavía no está maduro.
Estas uvas no tienen pepitas.
Prefiero el pan blanco.
Mi abuela dice que las zanahorias son buenas para la vista.
Nunca come verduras.
Los niños quieren patatas fritas.
¿Cuánto azúcar necesitas?
Dos cucharas son suficientes.
Tráeme un tenedor, por favor.
Este cuchillo de pan no corta.
Pon la mesa para seis.
La cena está en la mesa.
¡Buen provecho a todos!
¡Qué bien huele!
¡Qué sopa tan buena!
Voy a calentar la leche.
El helado del niño se está derritiendo al sol.
El chocolate es mi debilidad.
Pedimos una pizza grande.
La pizza llegó fría.
Quisiera una copa de vino tinto.
Dos cafés y un té, por favor.
Las aceitunas son de la finca de mi tío.
Cultivan sus propios tomates.
En el mercado se vende pescado fresco.
A mi padre no le gusta la comida picante.
A mi hijo le encantan las tortitas.
En invierno comemos muchas legumbres.
Esta tortilla lleva cebolla.
La receta es muy fácil.
¿Me das la receta?
El horno tarda diez minutos en calentarse.
No comas tan rápido.
Mastica la comida despacio y bien.
Hay demasiados platos para fregar.
Después de cenar tomamos café.
Suelo cenar poco.
La miel está en el armario.
Ella le pone miel a la leche.
Comamos juntos mañana.
Está lloviendo en la montaña.
Hoy hace mucho calor.
Esta mañana hace mucho frío fuera.
Esta mañana hace sol.
Hoy hace viento en la playa.
Anoche nevó.
Mañana lloverá en el norte.
¿Va a llover este fin de semana?
Creo que el sábado hará sol.
El cielo está gris.
Esta noche el cielo está despejado.
Hay muchas nubes.
¿Qué tiempo hace en tu pueblo?
Hoy hace buen tiempo.
Ayer hizo un tiempo horrible.
Coge un paraguas, que está lloviendo.
Nos mojamos con la lluvia.
Las calles están mojadas.
Hay niebla en la carretera.
La tormenta rompió una ventana.
Me dan miedo los truenos.
No llueve desde hace dos meses.
El río está helado.
Aquí el verano es muy seco.
En invierno anochece pronto.
La primavera es la estación favorita de mi madre.
Las hojas caen en otoño.
Estamos a treinta grados.
Hace demasiado calor para salir.
Ponte un abrigo, que hace frío.
El sol brilla sobre el mar.
Dejó de llover hace una hora.
Hay un arcoíris sobre las colinas.
¿Qué hora es ahora en México?
Son las tres de la tarde.
Ya son las siete y media.
Son las diez menos cuarto.
Es la una.
El tren sale a las seis y cuarto.
Me levanto a las siete todos los días.
¿A qué hora te acuestas los viernes?
Normalmente me acuesto a las once.
La tienda cierra a las ocho.
Llegamos tarde.
Hoy llegas pronto.
Espera un minuto, por favor.
Vuelvo en diez minutos.
La película dura dos horas.
¿Cuánto dura el viaje?
Se tarda más o menos una hora.
Hoy es lunes, uno de marzo.
Mañana es martes.
Ayer fue domingo y las tiendas estaban cerradas.
¿Qué día es la fiesta?
Trabajo de lunes a viernes.
Los miércoles voy a nadar.
El mercado es los jueves.
¡Nos vemos el sábado!
Mi cumpleaños es en mayo.
¿Cuándo es tu cumpleaños?
Es el cuatro de junio.
El colegio empieza en septiembre.
Nos vamos de vacaciones en agosto.
Enero es el mes más frío.
Es el doce de octubre.
Nací en mil novecientos noventa.
El año que viene cumpliré treinta años.
La semana pasada fue muy ajetreada.
Esta tarde tengo una reunión con mi jefe.
Hasta mañana por la mañana.
Te llamo esta noche.
Nos conocimos hace dos años.
Vivo aquí desde hace cinco años.
Uno, dos, tres, cuatro, cinco.
Seis más cuatro son diez.
Diez menos tres son siete.
Dos por ocho son dieciséis.
Mi mujer tiene dos hermanos y una hermana.
Hay treinta alumnos en la clase.
El libro tiene doscientas páginas.
Ella tiene veinticinco años.
¿Cuántos años tiene tu hija?
Mi jefe tiene cuarenta años.
Mi abuelo tiene ochenta años.
Cuesta quince euros.
Las entradas cuestan doce euros cada una.
Mil personas vinieron al concierto.
La ciudad tiene un millón de habitantes.
Necesitamos tres sillas más para los invitados.
La mitad del pastel es para ti.
Bebo dos litros de agua al día.
Corrió cinco kilómetros.
Mi número de teléfono es nueve, cuatro, siete...
El primer autobús sale a las seis.
Es la segunda vez que estoy aquí.
Vivimos en el quinto piso.
Quedó tercero en la carrera.
Conté veinte pájaros.
¿Cuántas personas hay?
Solo quedan unos pocos.
Cuenta hasta diez despacio.
El reloj va cinco minutos adelantado.
El tiempo vuela cuando estás de vacaciones.
Hoy no tengo tiempo.
¿Tienes un minuto para hablar?
Tenemos tiempo de sobra antes del tren.
Ya es demasiado tarde para llamarla.
Todavía es pronto para cenar.
En verano los días son más largos.
Todas las mañanas saco al perro.
A veces vamos al cine.
Los domingos nunca me levanto antes de las ocho.
Ella siempre llega puntual.
Normalmente comemos en casa.
Casi nunca veo la televisión.
Una vez por semana visito a mis padres.
El fin de semana pasó muy rápido.
¿Qué haces este fin de semana?
Nada especial.
Es medianoche.
En verano el sol sale a las seis.
El sol se pone detrás de las montañas.
Esta noche la luna está llena y brilla mucho.
Las estrellas brillan mucho.
Llega el otoño.
La semana que viene hará frío.
Esta es mi madre, Carmen.
Este es el coche de mi padre.
Tengo una familia grande.
Mi hermana es mayor que yo.
Mi hermano es dos años menor.
¿Tu marido tiene hermanos?
Soy hijo único.
Mis padres viven en Sevilla.
Mis abuelos son muy mayores.
Su marido es médico.
Su mujer trabaja en un banco.
Tienen tres hijos y un perro.
Nuestra hija estudia en Madrid.
Su hijo toca el piano.
Mi tío tiene una granja.
Mi tía vive sola.
Mis primos vienen a cenar.
El bebé está durmiendo en su cuna.
No despiertes al bebé.
El bebé nació el mes pasado.
Mi sobrino tiene cinco años.
Visitamos a nuestra abuela todos los domingos.
Mi padre me enseñó a nadar.
Mi madre me llama todos los días.
Toda la familia comió junta.
Ella se parece mucho a su padre.
Tiene los ojos de su madre.
Se casaron en junio.
Mi hermano y yo compartimos habitación.
Mis padres están orgullosos de nosotros.
Ella es alta y delgada.
Él es bajo y tiene el pelo oscuro.
Mi amigo tiene los ojos azules.
Tiene el pelo largo y pelirrojo.
Solo lleva gafas para leer.
Mi abuelo tiene barba blanca.
Tu hija está muy guapa con ese vestido.
Es muy gracioso.
Es tímida pero simpática.
Mi jefe es muy serio.
La profesora tiene paciencia con los niños.
¿Quién es ese hombre del sombrero?
Esa mujer es mi vecina.
El niño está jugando con una pelota.
La niña está leyendo un libro.
Esos niños son mis alumnos.
Estoy contento en esta ciudad.
Estoy muy cansado después del viaje.
Ella está triste hoy.
¿Por qué estás enfadado con tu hermana?
No estoy enfadado.
Está preocupado por su examen.
Estamos ilusionados con el viaje.
Están aburridos.
Estoy un poco nervioso.
¿Estás bien, abuela?
Estoy bien, gracias, ¿y tú?
¿Cómo estás hoy, Marta?
¿Cómo está tu madre después de la operación?
Ahora está mucho mejor.
A veces me siento solo.
¡Me alegro mucho de volver a verte, Pilar!
Echo de menos a mi familia.
Ella echa de menos a sus viejos amigos.
No tengas miedo del perro.
De niño me daba miedo la oscuridad.
Le sorprendió la noticia.
Siento lo de tu gato.
Siento llegar tarde.
No te preocupes por el dinero.
En la entrevista todo irá bien.
Hoy mi padre está de buen humor.
Por la mañana siempre está de mal humor.
Anoche nos reímos mucho.
La niña empezó a llorar.
¿Por qué llora tanto hoy el bebé?
Te quiero, mamá.
Quiero mucho a mis padres.
Odia levantarse temprano.
Espero que tu familia esté bien en Chile.
Estamos muy orgullosos de nuestro hijo.
Gracias por todo.
De nada, no fue nada.
Es muy amable de tu parte, gracias.
Confío totalmente en mi hermana.
Es mi mejor amiga desde el colegio.
Somos amigos desde el colegio.
He conocido a un amigo nuevo en el trabajo.
Mis amigos vienen el viernes.
Tiene muchos amigos en el pueblo.
Te presento a mi mujer, Elena.
Encantado de conocerle, señor Ruiz.
¿Cómo se llama tu perro nuevo?
Me llamo Lucía.
¿De dónde es tu profesor?
Soy de México.
Ella es de Argentina.
Somos de un pueblo pequeño.
¿Dónde viven tus primos?
Vivo en Valencia.
Es mi hermano pequeño.
Mi hermana mayor es enfermera.
Mi abuela cuenta historias estupendas.
Nuestra familia es del norte.
Los niños crecen muy rápido.
Cuando era joven, vivía junto al mar.
Mi padre siempre canta en el coche.
Mamá, ¿dónde está mi chaqueta?
Voy a llamar a mi hermana.
Saluda a tus padres de mi parte.
Mis dos primos son gemelos.
Los gemelos no se parecen.
Es muy buena persona.
La mujer de la panadería siempre está sonriendo.
Mi padre es tranquilo y callado.
Mi madre es muy activa.
No soy tan alto como mi hermano.
Mi hermana es la más pequeña de la familia.
Trabajo en una oficina.
¿Dónde trabaja tu mujer?
Trabajo en un hospital.
Ella es profesora.
Él es ingeniero.
Mi madre es abogada en Bilbao.
Mi hermano trabaja de camarero.
¿A qué se dedica tu hermano?
Estoy buscando trabajo en un restaurante.
Ha encontrado un trabajo nuevo.
Perdió su trabajo el año pasado.
Empiezo a trabajar a las nueve.
Termino de trabajar a las cinco.
Los viernes trabajo desde casa.
La reunión empieza a las diez.
La reunión fue muy larga.
Hoy tengo mucho trabajo.
Mi jefe está de vacaciones.
Necesitamos más tiempo para este proyecto.
Envíame el informe, por favor.
Te envié un correo esta mañana.
¿Leíste mi mensaje?
La impresora de la oficina no funciona.
Mi ordenador es muy lento.
He olvidado mi contraseña.
¿Puedes ayudarme con esto?
Lo terminaré mañana.
La oficina está en el segundo piso.
Comemos en la oficina.
Mis compañeros son muy majos.
Ella trabaja demasiado.
Los lunes siempre está ocupado.
Necesito unas vacaciones junto al mar.
La empresa tiene cincuenta empleados.
Abrieron una tienda nueva en el centro.
Tengo una entrevista el lunes.
La entrevista fue bien.
Le han ascendido.
Ella gana un buen sueldo.
La tienda necesita un cajero nuevo.
Mi padre es agricultor.
El panadero se levanta muy temprano.
Esta semana la médica trabaja de noche.
Los bomberos llegaron rápido.
El policía ayudó al anciano.
El mecánico está arreglando mi coche.
Quiero ser piloto.
Ella quiere ser veterinaria.
Mi hijo va al colegio en autobús.
El colegio está cerca de mi casa.
Las clases empiezan a las ocho y media.
Los lunes tengo matemáticas.
Mi asignatura favorita es la historia.
No entiendo este ejercicio.
¿Puedes explicarlo otra vez?
La profesora explica muy bien.
Abrid los libros por la página diez.
Escribe tu nombre en el papel.
Escuchad con atención la pregunta.
Levanta la mano para hablar.
No habléis durante el examen.
Mañana tengo un examen de historia.
¡He aprobado el examen!
Suspendió el examen de inglés.
Tenemos muchos deberes.
¿Has hecho los deberes de matemáticas?
Los hice ayer.
Estoy estudiando para el examen.
Ella estudia medicina.
Estoy aprendiendo español con un amigo.
El español no es difícil.
Mi padre habla un poco de español.
¿Tu profesora habla inglés?
¿Cómo se dice esto en español?
¿Qué significa esta palabra del cartel?
Habla más despacio, por favor, que estoy aprendiendo.
¿Puedes repetirlo, por favor?
No he entendido la última pregunta.
La biblioteca cierra a las nueve.
Saqué tres libros de la biblioteca.
Los alumnos todavía están en el aula.
El aula tiene ventanas grandes.
Necesito un lápiz y una goma.
¿Me prestas tu bolígrafo rojo?
Mi mochila pesa mucho.
El timbre suena a las once.
En el recreo jugamos en el patio.
Las vacaciones escolares empiezan la semana que viene.
En otoño voy a la universidad.
Estudió ingeniería en Barcelona.
Está escribiendo su tesis.
El curso dura un año.
Aprendí a leer a los cinco años.
Leer es muy importante.
Practica todos los días.
Los errores nos ayudan a aprender.
Mi profesor me puso una buena nota.
Vamos de excursión al museo con el colegio.
Los niños están dibujando animales.
Sentaos y estad callados, por favor.
Cerrad los libros y escuchad.
¿Quién sabe la respuesta?
Sé la respuesta de la segunda pregunta.
Esa respuesta es correcta.
Eso no está bien.
Inténtalo otra vez más despacio.
¡Muy bien!
Tengo que trabajar el sábado.
Trabajan en el mismo edificio.
Me he tomado el día libre.
Los domingos cerramos.
La tienda está abierta hasta las diez.
Mi madre se jubiló el año pasado.
Lleva diez años trabajando aquí.
Voy a cambiar de trabajo.
El nuevo director empieza mañana.
Tenemos que terminar esto para el viernes.
Fue un día duro en el trabajo.
¿Dónde está la estación de tren de este pueblo?
La estación está todo recto.
Gira a la derecha en la esquina.
Gira a la izquierda después del puente.
Está al lado del banco.
El museo está enfrente del parque.
¿Está lejos de aquí la playa?
Está a unos diez minutos a pie.
Perdone, ¿cómo se llega a la playa?
Siga esta calle hasta el final.
Me he perdido en el casco antiguo.
¿Me lo puede enseñar en el mapa?
Cogimos el autobús equivocado.
La parada del autobús está allí.
¿Cuándo sale el próximo tren?
El tren lleva veinte minutos de retraso.
Quiero un billete para Granada.
¿De ida o de ida y vuelta?
Un billete de ida y vuelta, por favor.
¿Qué andén es?
El tren sale del andén cuatro.
Perdí el primer tren por dos minutos.
Viajamos en coche.
Ella va al trabajo en bicicleta.
Voy andando al trabajo.
El metro es más rápido que el autobús.
El taxi está esperando delante del hotel.
¿Puede llamar un taxi para mi abuela?
Lléveme al aeropuerto, por favor.
Nuestro vuelo sale a mediodía.
El avión aterrizó a la hora prevista.
Me da miedo volar.
¿Dónde está el mostrador de facturación?
Mi maleta pesa demasiado.
Han perdido mi equipaje.
Tenga el pasaporte preparado.
Tengo que renovar el pasaporte antes de julio.
Este verano vamos a Portugal.
¿Has estado alguna vez en Italia?
Mis padres nunca han estado en el extranjero.
Nos alojamos en un hotel pequeño.
Tengo una reserva para dos noches.
¿Está incluido el desayuno?
La habitación tiene vistas al mar.
El hotel está al lado de la playa.
¿A qué hora hay que dejar la habitación?
La llave no funciona.
Vamos a visitar la catedral.
El casco antiguo es muy bonito.
Las calles son estrechas y empinadas.
En verano hay muchos turistas.
Hice muchas fotos.
¿Nos puede hacer una foto junto a la fuente?
Alquilamos un coche para una semana.
Lléneme el depósito, por favor.
La carretera está cortada.
Hoy hay mucho tráfico.
Ve más despacio, por favor.
¿Dónde puedo aparcar cerca del museo?
No se puede aparcar delante del hospital.
Abróchate el cinturón.
El coche se averió en la autopista.
Llegamos a medianoche.
El viaje fue largo pero agradable.
Me encanta viajar en tren.
El año que viene iremos a Perú.
La ciudad es muy grande.
Hay un mercado en la plaza mayor.
El parque está lleno de gente.
Hoy el banco está cerrado.
¿Hay una farmacia cerca de aquí?
Hay una en la calle siguiente.
Correos está detrás de la iglesia.
El puente cruza el río.
Las calles están muy limpias.
La ciudad es ruidosa por la noche.
Prefiero los pueblos pequeños.
La nueva biblioteca es muy moderna.
Hay un hospital en el centro.
Paseamos por el puerto viejo.
La cafetería de la esquina siempre está llena.
Quedamos delante del cine.
El concierto es en la plaza.
Aquí los edificios son muy altos.
Cruza la calle en el semáforo.
Ten cuidado con los coches.
El semáforo está en rojo.
¿Adónde quieres ir con los niños este verano?
Quiero ir al zoo.
¿Cuánto cuesta una entrada al museo?
El museo es gratis los domingos.
La visita empieza a las diez.
El guía habla inglés y español.
Subimos a la torre.
La vista desde arriba es impresionante.
Compré una postal para mi madre.
Te mandaré una postal.
Pasamos unas vacaciones estupendas.
Quiero volver el año que viene.
¡Buen viaje a Lima!
Voy a hacer la maleta.
No olvides los billetes.
El barco sale del puerto al amanecer.
La travesía dura tres horas.
Me mareo en los barcos.
Acampamos junto a un lago.
El camping estaba lleno.
Dormimos en una tienda de campaña cerca del río.
El pueblo está al final del valle.
Es la capital del país.
España está en el sur de Europa.
Madrid está en el centro de España.
Se habla español en muchos países.
La frontera está a cincuenta kilómetros.
El aeropuerto está lejos de la ciudad.
Esperamos dos horas en el aeropuerto.
¿De qué puerta sale el vuelo?
¿Cuánto cuesta esta lámpara?
¿Cuánto cuestan estos zapatos?
Ese sofá es demasiado caro para nosotros.
La fruta del mercado es muy barata.
¿Lo tiene en otro color?
¿Tiene una talla más pequeña?
¿Qué talla usa?
¿Me puedo probar la chaqueta gris?
Los probadores están al fondo.
Esta camisa me queda grande.
Estos pantalones me quedan cortos.
El vestido verde te queda muy bien.
Me lo llevo.
Solo estoy mirando los zapatos, gracias.
¿Puedo pagar con tarjeta?
Solo aceptamos efectivo.
Aquí tiene el cambio y el recibo.
¿Necesita una bolsa para el pan?
¿Me da el recibo, por favor?
Quiero devolver esta chaqueta.
La tienda está de rebajas.
Todo está a mitad de precio.
Me he comprado un abrigo nuevo.
Ella siempre va de negro.
Lleva una camisa azul.
Necesito zapatos nuevos para la boda.
Ponte la chaqueta.
Quítate el sombrero dentro de la iglesia.
Tengo los calcetines mojados por la lluvia.
No encuentro el otro guante.
Esta bufanda es de lana.
La falda me aprieta.
Me gustan tus zapatos nuevos.
¿Dónde compraste ese bolso?
Lo compré en una tienda pequeña del centro.
Vamos de compras los sábados.
Odio ir de compras.
El supermercado está lleno de gente.
Hagamos una lista de la compra.
Necesitamos huevos, leche y arroz.
Un kilo de naranjas, por favor.
¿Algo más?
Nada más, gracias.
La carnicería está al lado de la panadería.
Aquí la fruta es muy fresca.
Los precios han subido mucho.
No tengo suficiente dinero para las entradas.
¿Me prestas diez euros?
Te lo devuelvo mañana.
Tengo que ir al banco antes de las dos.
¿Dónde está el cajero más cercano?
Estoy ahorrando para un coche.
Gasta demasiado en ropa.
Este mes la factura ha sido muy alta.
¿Quién paga?
Esta vez pago yo.
Paguemos la cuenta entre los cuatro.
La tienda abre a las diez.
¿La tienda abre los domingos?
La librería tiene muchos libros antiguos.
He pedido un libro por internet.
El paquete llegó esta mañana.
El paquete todavía no ha llegado.
Compré un regalo para mi hermano.
¿Me lo puede envolver, por favor?
Es para regalo.
Estas flores son para ti.
El rojo es más bonito.
Prefiero el verde.
¿Cuál es más barato?
Este cuesta menos.
Es el reloj más caro de la tienda.
Mi móvil es viejo, necesito uno nuevo.
El nuevo modelo es muy caro.
El dependiente fue muy amable.
Se nos ha acabado el pan.
Se me olvidó comprar leche.
Ella lleva las bolsas al coche.
El centro comercial está a las afueras de la ciudad.
En el mercado venden fruta y pescado.
Compramos queso en el mercado.
Ese abrigo negro te sienta bien.
Este color no me queda bien.
Sus zapatos siempre están limpios.
Tengo que planchar mi camisa blanca para mañana.
La camisa está sucia.
Lava los vaqueros con agua fría.
Mi jersey encogió al lavarlo.
Su vestido es muy elegante.
Se compró una corbata para la entrevista.
¿Dónde he dejado las gafas de sol?
He perdido la cartera.
La cartera estaba en mi bolso.
El precio está en la etiqueta.
¿Hay descuento para estudiantes?
Los niños menores de cinco años no pagan.
Este abrigo vale lo que cuesta.
No me encuentro bien desde esta mañana.
Me duele la cabeza por el ruido.
Me duele la espalda cuando estoy mucho tiempo sentado.
Me duelen los pies después del paseo.
Le duele la garganta.
Estoy resfriado y tengo un poco de fiebre.
Tiene fiebre.
Creo que tengo gripe.
Deberías ir al médico.
Tengo cita con el médico.
El médico puede atenderle a las cuatro.
¿Qué te pasa en la pierna?
¿Dónde le duele exactamente?
Me duele aquí, a la izquierda.
Abra la boca, por favor.
Respire hondo.
Tome este jarabe tres veces al día.
Tome una pastilla después de cada comida.
La farmacia está abierta toda la noche.
Necesito algo para la tos.
Toso mucho por la noche.
Me rompí el brazo cuando tenía diez años.
Se hizo daño en la rodilla jugando al fútbol.
Se cortó el dedo con un cuchillo.
¡Llame a una ambulancia, rápido!
¿Es grave, doctor?
No es nada grave, solo un corte pequeño.
Tienes que descansar.
Quédate en la cama dos días.
Bebe mucha agua cuando hace calor.
Me siento mucho mejor después del descanso.
¡Que te mejores, abuelo!
Mi abuela está en el hospital.
La enfermera fue muy amable.
Voy al dentista dos veces al año.
Me duele una muela.
Lávate los dientes antes de dormir.
Lávate las manos antes de sentarte a la mesa.
Mi hijo es alérgico a los gatos.
En primavera me pican los ojos.
No puedo dormir por la noche cuando hace calor.
Anoche dormí mal.
Necesito dormir más.
Comer fruta es sano.
El médico dice que fumar es malo para la salud.
Mi tío dejó de fumar el año pasado.
Salgo a correr tres veces por semana.
Ella hace yoga todas las mañanas.
El ejercicio te sienta bien.
Estoy intentando adelgazar antes del verano.
Ha engordado.
Tengo las piernas cansadas.
Tengo las manos frías.
Tiene una pequeña cicatriz en la frente.
Cierra los ojos y relájate.
Levanta los brazos.
Dobla las rodillas.
Ponte derecho.
El corazón me late deprisa.
Estoy mareado después del paseo en barco.
Siéntate un momento.
¿Su hija tiene alguna alergia?
Tengo que tomarme la tensión.
Los resultados de los análisis son buenos.
El bebé tiene fiebre.
Me duele el oído.
Todas las mañanas tengo la nariz tapada.
Lleva una venda en la mano.
La operaron el mes pasado.
Se está recuperando bien.
Mi médico dice que andar es el mejor ejercicio.
Quiero comer más verdura.
Bebo demasiado café.
Demasiado azúcar es malo para los dientes.
Hoy pareces cansado, Luis.
¡En esa foto sales muy bien!
Mi abuela necesita gafas para leer.
Sin gafas no veo muy bien.
Tengo un justificante médico.
Mi prima está embarazada de gemelos.
El hospital está al final de esta calle.
El horario de visitas es de cinco a ocho.
Ahora tengo el pelo muy largo.
Voy a cortarme el pelo.
Tiene las manos muy grandes.
Tiene una sonrisa preciosa.
Me caí de la bici.
Cuidado, el suelo de la cocina está mojado.
Me duele el estómago después de comer.
Comí algo que me sentó mal.
El descanso es importante después de una enfermedad.
¿Qué hace tu padre en su tiempo libre?
Me gusta leer y cocinar.
Toco la guitarra en un grupo.
Ella toca el violín en una orquesta.
Juega al tenis los sábados.
Jugamos al fútbol en el parque.
¿Juegas al ajedrez con tu abuelo?
Estoy aprendiendo a tocar el piano.
Mi hijo está en el equipo de baloncesto.
Nuestro equipo ganó el partido del domingo.
Ayer perdieron el partido.
¿Quién ganó la carrera?
El partido empieza a las nueve.
Veamos el partido juntos.
Voy a nadar todas las mañanas.
Ella corre en el parque antes del trabajo.
Fuimos en bici por la montaña.
A mi hija le encanta bailar.
Salen a bailar los viernes por la noche.
Canta en un coro.
Escucho música en el tren.
¿Qué tipo de música le gusta a tu hijo?
Me gusta el jazz y la música clásica.
El concierto fue fantástico.
Compramos entradas para el concierto.
Estoy leyendo un libro muy bueno.
¿Quién escribió este libro sobre el mar?
He leído todas sus novelas.
Mi hermano colecciona sellos.
Ella pinta paisajes.
Me gusta dibujar por las tardes.
Hace fotos de pájaros.
A menudo vamos a pescar al lago.
Voy al gimnasio después del trabajo.
¿Quieres ir al cine esta noche?
¿Qué película ponen?
La película fue aburrida.
Me dormí durante la película.
Vimos una serie en la televisión.
Mi serie favorita se ha terminado.
Van al teatro una vez al mes.
Me gusta jugar a las cartas con mis abuelos.
Los niños juegan demasiado a los videojuegos.
Vamos a dar un paseo.
Caminamos por la playa.
Me gusta hacer senderismo en la montaña.
Subimos a lo alto de la colina.
Se le dan muy bien los deportes.
No se me da muy bien bailar.
Ella nada muy rápido.
Mi hermano pequeño todavía no sabe nadar.
¿Tus hijos saben montar a caballo?
Aprendí a montar en bici a los seis años.
En febrero vamos a esquiar.
En invierno hago punto.
A mi abuelo le encanta la jardinería.
Ella cultiva rosas en su jardín.
Toca la batería muy alto.
El grupo toca todos los sábados en el bar.
Escribo en mi diario todas las noches.
Los días de lluvia jugamos a juegos de mesa.
¿Quieres jugar a las cartas con nosotros?
Te toca a ti elegir la película.
¡He ganado la primera partida!
¡Has vuelto a hacer trampa a las cartas!
El museo tiene una exposición nueva.
Pasamos la tarde en el museo.
Los domingos hacemos un picnic en el parque.
Me gusta hacer puzles.
Practica el piano una hora al día.
El partido del sábado fue muy emocionante.
Marcó dos goles.
El árbitro se equivocó.
El estadio estaba lleno.
Animamos a nuestro equipo.
No tengo aficiones.
Mi afición es la fotografía.
Me gustaría aprender a cantar.
En julio vamos al festival.
La fiesta empieza a las diez.
¿Vienes a la fiesta?
No puedo ir, estoy ocupado.
Fue una fiesta estupenda.
Bailamos toda la noche en la boda.
¡Feliz cumpleaños, Sofía!
¡Feliz Navidad a toda la familia!
¡Feliz Año Nuevo, vecinos!
¡Que os divirtáis en el concierto!
Nos divertimos mucho en la feria.
Este fin de semana voy a descansar.
Me gusta sentarme al sol y leer.
Ella va a la biblioteca cada semana.
Lee el periódico todas las mañanas en la cafetería.
Prefiero los libros a las películas.
El final del libro era triste.
Tengo un perro que se llama Max.
Mi perro es muy cariñoso.
El perro le está ladrando al cartero.
El gato está durmiendo encima de mi jersey.
Nuestro gato caza ratones.
¿Tus abuelos tienen mascotas?
Tenemos dos gatos y un conejo.
Los perros son muy fieles.
Los gatos duermen mucho.
El pájaro está cantando en el árbol.
Los pájaros vuelan hacia el sur en invierno.
En invierno doy de comer a los pájaros.
No les des pan a los patos.
El caballo está en el prado.
Las vacas de esta granja dan mucha leche.
El granjero tiene muchas ovejas.
Las gallinas están en el corral.
El cerdo está comiendo.
Vi un zorro en el jardín.
Hay lobos en esas montañas.
El oso está durmiendo en su cueva.
El león del zoo es muy viejo.
Los elefantes son muy inteligentes.
La jirafa tiene el cuello muy largo.
Los monos viven en los árboles.
La serpiente no es peligrosa.
A mi hermana le dan miedo las arañas.
Hay una mosca en mi sopa.
Los mosquitos pican por la noche.
Las abejas del jardín de mi tío hacen miel.
Una mariposa se posó en mi mano.
Esos peces pequeños viven en el río.
Vimos delfines desde el barco.
La ballena es el animal más grande.
La tortuga anda despacio.
Mi conejo come zanahorias.
El perro quiere salir.
Saco al perro dos veces al día.
El cachorro es muy pequeño.
El gato se esconde debajo de la mesa.
¿De quién es este perro?
Ese perro es mío.
El perro no muerde.
Los animales necesitan cuidados.
La veterinaria examinó a nuestro gato.
Aquí los árboles son muy altos.
Hay un árbol viejo en la plaza.
Plantamos un árbol en el jardín.
Los niños se subieron al árbol.
El bosque es muy oscuro.
Caminamos por el bosque.
El río desemboca en el mar.
En mayo el agua del lago está muy fría.
Hoy el mar está en calma.
Las olas son muy grandes.
La playa está cubierta de conchas.
Las montañas están cubiertas de nieve.
Esta montaña es muy alta.
En primavera el valle está verde.
Las flores están floreciendo.
Las rosas del parque son rojas.
Por la mañana la hierba está mojada.
No pises el césped.
La isla es muy pequeña.
Hay una cascada cerca del pueblo.
El desierto es caluroso durante el día.
La Tierra gira alrededor del sol.
La naturaleza es bonita.
Debemos proteger el medio ambiente.
No tires basura al suelo.
En la montaña el aire es limpio.
Hay muchas estrellas en el cielo.
Las hojas se están poniendo amarillas.
Este año el manzano tiene mucha fruta.
El campo está lleno de girasoles.
Me gusta el olor del bosque.
Me gusta más la montaña que la playa.
A ella le gusta el mar.
Nos gustan los animales.
A mis hijos les gustan los caballos.
Me gustan los pájaros.
A él le gustan las flores.
Les gustan los perros.
¿Te gustan las flores?
No me gustan las serpientes.
Nos gustan los árboles en otoño.
A ella no le gustan los gatos.
Me gustan los árboles verdes.
Me gustan los perros grandes.
Me gustan los gatos pequeños.
Me gusta el mar.
Me gusta la lluvia.
Me gusta el bosque.
Nuestra calle tiene muchos árboles.
Los árboles nos dan sombra.
Estos árboles tienen cien años.
Talaron los árboles viejos.
El viento mueve los árboles.
Los pájaros duermen en los árboles.
El caballo corre muy rápido.
Las ovejas están en la colina.
El águila vuela alto.
El búho caza de noche.
La rana salta al estanque.
Hay hormigas en la cocina.
¡Hola, Marta!
Buenos días, señora García.
Buenas tardes a todos.
Buenas noches.
Adiós, hasta el lunes.
Hasta luego, nos vemos en la cafetería.
Hasta pronto, nos vemos en Granada.
Dos panecillos, por favor.
Muchas gracias por las flores.
Perdone, ¿es suyo este bolso?
Perdona, no te he oído.
Sí, claro que puedes venir.
No, gracias.
Quizás mañana.
No sé su nueva dirección.
Creo que no.
Creo que sí, pero no estoy seguro.
A mí también me gusta.
A mí tampoco me gusta ese color.
Eso es, está a la izquierda.
No importa si llegas tarde.
¡Qué pena lo de la lluvia!
¡Qué bonito es tu jardín!
¡Buena idea, vamos al lago!
¡Claro que no!
¡Socorro, mi coche no arranca!
¡Cuidado con las escaleras!
¡Date prisa, que viene el autobús!
Ven aquí y mira esta foto.
¡Espérame en la parada del autobús!
Siéntate aquí, a mi lado.
Dame la mano para cruzar la calle.
Mira esta foto antigua del abuelo.
Escúchame un momento.
No te vayas todavía, que es pronto.
No toques eso.
No corras por el pasillo.
Dime la verdad sobre el jarrón roto.
Llámame cuando llegues al hotel.
Escríbeme pronto.
Trae a tu hermana.
Déjalo en la mesa.
No te olvides de llamar a tu madre.
Vámonos a casa, que se hace tarde.
Empecemos por la primera pregunta.
¿A quién esperas en la puerta?
¿Quién es al teléfono?
¿Qué es esta cajita?
¿Qué es ese ruido en la cocina?
¿Qué le ha pasado a tu bici?
¿Qué estás haciendo en el garaje?
Estoy leyendo una novela policíaca.
¿Qué quieres para tu décimo cumpleaños?
Quiero agua fría de la nevera.
¿Adónde vas con esa maleta?
Voy al mercado a por pescado.
¿Dónde estabas a la hora de comer?
Estaba en casa con mi hermano.
¿Cuándo llegaste a Málaga?
Llegué ayer en tren.
¿Cuándo te vas a Chile?
Me voy el viernes.
¿Por qué te ríes de mí?
¿Por qué no mañana?
Porque estoy cansado.
¿Cómo arreglaste la puerta?
¿Cuánto quieres?
Solo un poco.
¿Cuántos hijos tiene tu hermana?
Tengo dos.
¿Qué autobús va al centro?
El número cinco.
¿De quién es este abrigo?
Es la bici de mi hermano.
¿Está libre este asiento junto a la ventana?
Sí, siéntate.
¿Puedo pasar un momento?
¿Me oís los de atrás?
Sí, te oigo.
¿Entiendes el mapa?
Sí, lo entiendo.
¿Estás seguro de que es esta calle?
No estoy seguro de a qué hora empieza.
¿Es verdad que te mudas?
No es verdad, me quedo aquí.
¿Vienes con nosotros a la playa?
Sí, voy en un minuto.
¿Has terminado los deberes del lunes?
Todavía no.
¿Necesitas ayuda con las bolsas?
No, gracias, puedo llevarlo solo.
¿Está tu hermano en casa?
No, ha salido.
¿Has dormido bien?
Sí, muy bien.
¿Qué hay de nuevo en el pueblo?
Poca cosa.
¿Dónde está todo el mundo esta mañana?
Están en el jardín.
¿A qué hora empieza la película?
A las nueve y media.
¿Hay una panadería cerca de aquí?
Creo que no hay ninguno.
¿Puedo abrir un poco la ventana?
Claro, adelante.
¿Te importa si me siento aquí?
En absoluto, siéntate.
¿De qué color es tu coche?
Es blanco con el techo negro.
¿Cuál es tu número de teléfono?
¿Cuál es el color favorito de tu hija?
Mi color favorito es el verde.
¿Quién ha hecho este dibujo?
No he sido yo, ha sido el gato.
Nadie sabe dónde está la llave.
No hay nada en la caja.
No vi a nadie.
Nunca tomo café por la noche.
Él no trabaja los lunes.
En la ciudad no tenemos coche.
No vinieron a la fiesta.
No le diré a nadie lo de la fiesta.
Ella no puede venir hoy.
No tienes que pagar.
No está lejos.
No queda nada de pan.
Nunca he visto el mar.
Esta tarde no ha llamado nadie.
Ayer fui al mercado con mi madre.
El verano pasado alquilamos una casa junto al mar.
Cuando era niño, vivía en un pueblo.
Jugábamos en la calle hasta que anochecía.
Mi abuelo trabajó en una fábrica durante cuarenta años.
Conocí a mi mujer en la universidad.
Me llamó mientras estaba cenando.
Llovía cuando salimos de casa.
Estaba leyendo cuando se fue la luz.
Ya he visto esta película.
¿Alguna vez has comido caracoles?
Acabamos de llegar a la estación.
Acaba de irse.
Llevo una hora esperando.
Ya habían comido cuando llegamos.
Te llamaré mañana después del trabajo.
Ya veremos qué tiempo hace.
Estará aquí a las cinco.
Voy a estudiar medicina.
Van a comprarse un coche nuevo.
Va a ser un día largo.
¿Qué harás después del colegio?
Me gustaría vivir en el campo.
Si llueve, nos quedaremos en casa.
Si tuviera tiempo, aprendería italiano.
Te ayudaría, pero no puedo.
Deberías beber más agua.
Tenemos que irnos ya.
Puedes usar mi ordenador.
¿Puedo hacer una pregunta sobre el examen?
Necesito hablar contigo del viaje.
Quiero que vengas conmigo al médico.
Espero que mañana no llueva.
Me alegro de que hayas venido.
Es importante dormir bien.
Es fácil perderse en esta ciudad.
El libro que me diste es muy interesante.
La mujer que vive al lado es piloto.
El restaurante donde comimos era muy barato.
Conozco un sitio donde hacen buen café.
Creo que el profesor tiene razón.
No creo que venga esta noche.
Dijo que estaba cansada.
Me dijo que tenía un trabajo nuevo.
No sé dónde vive tu primo.
¿Sabes qué hora es?
Se me olvidó lo que me dijiste.
Antes de acostarme, leo un poco.
Después de comer dimos un paseo.
Mientras cocinas, yo pongo la mesa.
En cuanto llegue, te llamo.
El domingo nos quedamos en casa porque estaba lloviendo.
Estoy cansado, así que me voy a la cama.
Aunque hacía frío, fuimos a la playa.
Estudia mucho pero no aprueba.
O vienes ahora o nos vamos sin ti.
No puedo salir porque tengo que estudiar.
Cuanto más practicas, mejor tocas.
Este verano hace más calor que el verano pasado.
Mi coche es más viejo que el tuyo.
Este es el mejor día de mi vida.
Es la chica más alta de la clase.
Tu casa es tan grande como la mía.
Hoy es peor que ayer.
Llegamos al hotel tarde por la noche, muy cansados después del viaje.
Todos los veranos mi familia va al pueblo donde nacieron mis abuelos.
Mi hermana trabaja en un hospital y a menudo tiene que trabajar de noche.
Cuando llegamos a la estación, el tren ya había salido.
Si quieres mejorar tu español, deberías leer todos los días.
Los niños jugaron en el jardín toda la tarde mientras nosotros hacíamos la cena.
Me gustaría visitar México algún día y ver las pirámides.
Tenemos que comprar fruta, pan y algo para cenar antes de que cierre la tienda.
Mi padre se levanta a las seis, hace café y lee el periódico.
En invierno los días son cortos y anochece a las cinco y media.
El médico me dijo que descansara una semana y bebiera mucha agua.
Anoche hubo una gran tormenta y se fue la luz durante dos horas.
Llevo dos años aprendiendo español y ya puedo leer el periódico.
Nuestros vecinos tienen un perro muy grande que ladra cada vez que pasa alguien.
Los domingos por la mañana solemos desayunar en la terraza.
El museo cierra los lunes, así que iremos el martes.
Ha vivido en tres países distintos y habla cuatro idiomas.
Caminamos durante horas por el casco antiguo y comimos en una plaza pequeña.
¿Me puede decir cómo llegar al hospital desde aquí?
Ayer no fui a trabajar porque tenía un resfriado horrible.
El autobús iba tan lleno que decidimos ir andando.
Cuando termine la universidad, quiero viajar por Sudamérica.
Mi abuela siempre dice que la mejor comida es la que se hace en casa.
La profesora pidió a los alumnos que escribieran un cuento sobre sus vacaciones.
Plantamos tomates en primavera y ahora tenemos más de los que podemos comer.
Se olvidó las llaves, así que tuvo que esperar fuera a su mujer.
Era la primera vez que veía la nieve.
Nunca olvidaré ese día.
Prometió que volvería.
Para mañana habrán terminado.
Íbamos a llamarte, pero se nos olvidó.
La carta llegó con tres días de retraso.
Antes bebía mucho café.
Antes vivía en Londres.
En verano íbamos a menudo al río.
Siempre quiso ser cantante.
La casa se construyó hace cien años.
El viento rompió la ventana.
Aquí se habla español.
Los sábados las tiendas cierran pronto.
Nací en un pueblo pequeño del sur.
Mis padres se conocieron en París.
Nos perdimos en el bosque, pero un granjero nos ayudó.
He estado dos veces en ese restaurante.
Todavía no me ha llamado.
¿Ya has comprado las entradas?
Sí, las compré esta mañana.
Luego friego los platos.
Mañana hablamos de las vacaciones.
Como pescado los viernes.
Comes demasiados dulces.
Ella desayuna a las ocho.
Comemos mucha fruta.
Cenan muy tarde.
Vivo cerca del río.
Vives muy lejos.
Vive con sus abuelos.
Vivimos en una calle tranquila.
Viven en el mismo edificio que nosotros.
Hablo francés y español.
Ella habla muy deprisa.
En casa hablamos inglés.
Mis vecinos no hablan español.
¿Tu marido habla alemán?
Leo antes de dormir.
Lee muchos cómics.
Leemos el mismo libro.
Leen las noticias en internet.
Escribo con la mano izquierda.
Ella escribe poemas.
Escribimos una carta a nuestra abuela.
Quiero un vaso de agua.
Ella quiere una bici nueva.
Queremos ir a la playa.
Quieren comprar una casa.
¿Quieres venir al mercado?
Sé nadar muy bien.
Mi primo sabe tocar la guitarra.
No podemos esperar más.
¿Pueden quedarse a cenar?
Tengo un coche rojo pequeño.
Ella tiene muchos libros.
Tenemos un problema con la calefacción.
Tienen un jardín precioso.
¿Tienes un bolígrafo que me dejes?
Soy estudiante en Salamanca.
Eres muy amable por ayudarnos.
Es mi vecino.
Ana y yo somos primos.
Son médicos.
Estoy en la estación.
Ella está en la cocina.
Estamos en el coche.
Están en el colegio.
¿Dónde están jugando los niños?
Voy al gimnasio los martes.
Ella va al mercado los sábados.
Vamos a la playa todos los veranos.
Van a misa los domingos.
Ayer fui al médico.
Ella fue a París el año pasado.
Nos acostamos muy tarde.
Se fueron a casa temprano.
Veo las montañas desde mi ventana.
¿Ves ese pájaro?
Ayer vimos una película buena.
Vieron el accidente.
Conozco a tu hermana.
¿Conoces esta ciudad?
Ella conoce a todo el mundo en el pueblo.
Sé que es tarde.
Sabemos el camino.
Necesito un móvil nuevo.
Necesita ayuda con los deberes.
Necesitamos más sillas.
Abro la tienda a las nueve.
Ella abrió la carta.
Por la noche cierro las ventanas.
Cortaron la carretera por la carrera.
Compro pan todos los días.
Compramos pescado en el puerto.
Él comprará las entradas mañana.
Duermo ocho horas cada noche.
Los niños están durmiendo.
¿Dormiste en el avión?
Bebo mucho té.
Bebimos demasiado café.
Juego con mi hija en el parque.
Los niños están jugando fuera.
Estoy esperando el autobús número doce.
Ella está esperando a su amiga.
Esperamos una hora.
Ayudo a mi padre en el jardín.
¿Me ayudas a llevar esta caja?
Nos ayudaron mucho.
Estoy buscando mis gafas de leer.
Estamos buscando un piso.
Encontré una moneda en la calle.
Encontró sus llaves.
Entiendo un poco.
Ella no entiende la pregunta.
Recuerdo muy bien ese día.
¿Te acuerdas de mi nombre?
Me olvido de todo.
Pienso mucho en ti.
¿Qué opinas de mi nuevo corte de pelo?
Vengo del trabajo.
Viene todos los martes.
Vinieron en tren.
¿Vendrás mañana al mercado?
Le doy una galleta a mi perro cada noche.
Ella me regaló un libro.
Yo traigo el vino.
Trajo flores para su madre.
Pongo las llaves en el cajón.
¿Dónde has puesto mi libro de cocina?
Empiezo el curso la semana que viene.
La película ya ha empezado.
Anoche terminé el libro.
¿Cuándo termina la clase?
Cojo el autobús a las ocho.
Ella lleva a sus hijos al colegio.
Aprendo palabras nuevas cada día.
Aprendieron a cocinar en Italia.
Enseño inglés a niños.
Mi madre me enseñó a cocinar.
Por las mañanas corro junto al río.
El perro corrió detrás del gato del vecino.
Canto mal.
Cantamos en el coche todo el camino.
Voy al trabajo en coche.
Ella conduce con mucho cuidado.
No sé conducir.
Llamo a mi abuela los domingos.
¿Quién ha llamado?
Pago el alquiler el día uno de cada mes.
Me encanta mi trabajo en la biblioteca.
A ella le encanta el chocolate.
Nos encanta esta playa.
Me he quedado sin batería en el móvil.
¿Puedo cargar el móvil aquí?
Luego te mando un mensaje.
No me llegó tu mensaje.
¿Cuál es la contraseña del wifi?
Hoy internet va muy lento.
Trabajo con el ordenador todo el día.
Mi portátil está roto.
Apaga el móvil durante la película.
Siempre está mirando el móvil.
Llámame al móvil.
Te devuelvo la llamada en cinco minutos.
El teléfono del médico está comunicando.
Con este teléfono no te oigo muy bien.
¿Puedes hablar más alto?
Te escribiré por correo electrónico.
Mira tu correo.
Vi las fotos que mandaste.
Borra esa foto, por favor.
Me he descargado una aplicación nueva.
La pantalla es demasiado pequeña.
La cámara hace muy buenas fotos.
Prefiero los libros en papel.
Creo que tienes razón con el precio.
Te equivocas con la fecha.
En mi opinión, es una buena idea.
Estoy de acuerdo contigo sobre la película.
Mi mujer no está de acuerdo.
Ese precio me parece bien.
Parece muy difícil.
No es tan fácil como parece.
Es muy interesante.
Esto es muy importante.
El ascensor roto no es problema mío.
Es una buena pregunta para el profesor.
Es una mala idea.
Es imposible aparcar en el centro.
Con un poco de suerte todo es posible.
Depende.
La mesa está mejor así.
He cambiado de opinión sobre el viaje.
Déjame pensarlo hasta mañana.
No tengo ni idea de dónde está la estación.
No me interesa el fútbol.
El color de las paredes lo decides tú.
Tienes razón, lo siento.
El accidente fue culpa mía.
No es culpa tuya que lloviera.
En el examen hice lo que pude.
¡Suerte con el examen!
¡Enhorabuena por tu nuevo trabajo!
¡Bien hecho, niños!
¡Salud!
¡Jesús! ¿Estás resfriado?
Bienvenido a nuestra casa del pueblo.
¡Bienvenidos a España!
Perdona que te moleste tan tarde.
¿Me podrías hacer un favor esta tarde?
¿Podrías cerrar la puerta al salir?
¿Quieres bailar conmigo, Laura?
¿Quieres beber algo frío?
Un vaso de agua sin hielo, por favor.
Me encantaría.
Lo siento, hoy no puedo.
Otra vez será.
Quedamos a las seis.
¿Dónde quedamos el viernes?
En la entrada del parque.
Te espero en la puerta.
Estoy de camino a tu casa.
Llego en cinco minutos.
Perdona, voy con retraso.
No pasa nada, puedo esperar.
Me toca pagar a mí.
Ahora me tengo que ir, que llega mi autobús.
Me ha gustado hablar contigo.
Cuídate en la carretera.
Saluda a tu hermana.
Nos vemos la semana que viene.
La noticia salió en la radio.
Hubo un accidente en la autopista.
No hubo heridos.
El fuego empezó en la cocina del restaurante.
Alguien me robó la bici.
Llamé a la policía.
El ladrón se escapó con mi bolso.
Ayer robaron el banco.
En mayo hay elecciones.
El alcalde inauguró el colegio nuevo.
Los precios suben cada año.
El gobierno anunció nuevos impuestos.
Mucha gente fue a la manifestación.
Las calles estaban llenas de gente.
Las tiendas están cerradas por la fiesta.
Mañana es festivo.
Todo el pueblo celebra la fiesta.
A medianoche hubo fuegos artificiales.
Las campanas de la iglesia suenan a mediodía.
Tenemos un vecino nuevo.
Los vecinos nuevos son de Chile.
Le presté mi coche.
Nunca devuelve lo que le prestan.
Ella guarda todas sus cartas antiguas.
Tiré los periódicos viejos.
Recicla las botellas de vidrio.
Ahorra agua, por favor.
Cierra el grifo.
La luz del baño no funciona.
Necesitamos una bombilla nueva.
Arreglé la silla yo mismo.
La puerta hace un ruido raro.
¿Dónde está el hospital más cercano a la playa?
¿Cuál es la fecha del examen?
El correo llega a las once.
Hay una carta del banco para ti.
Firme aquí y aquí, por favor.
Rellene este formulario con bolígrafo negro.
Escriba su dirección arriba.
¿Cuál es el apellido de tu madre?
¿Cómo se escribe?
Esta mañana el cielo está muy azul.
La hierba del parque está muy verde.
La nieve es blanca.
Su coche es negro.
Tengo un perro marrón.
Las naranjas son de color naranja.
Mi camisa favorita es morada.
Pintó la puerta de verde.
El anciano camina con un bastón.
La niña tiene un globo rojo.
El domingo por la mañana las calles están vacías.
La ciudad es preciosa de noche.
El agua está muy clara.
La habitación del fondo está oscura.
Esta caja pesa mucho.
La bolsa pesa poco.
La carretera es larga y recta.
El cuento es muy corto.
Esta silla es dura.
El pan está blando.
El examen fue fácil.
La pregunta es difícil.
El vaso está lleno.
El pueblo es tranquilo y apacible.
La música de este bar está demasiado alta.
La película es muy larga.
Mis zapatos son nuevos.
Nuestro coche es muy viejo.
Ella es joven.
Este es un sitio precioso.
Es un edificio feo.
La sopa está buena.
El pescado huele mal.
Aquí el café es excelente.
La habitación está limpia y ordenada.
Tu habitación está otra vez hecha un desastre, Pedro.
Los zapatos están debajo de la cama.
El gato está en el tejado.
El cuadro está encima del sofá.
El colegio está entre el banco y el parque.
La panadería está delante de mi casa.
El coche está detrás del camión.
El perro está cerca de la puerta.
Los niños están dentro.
Comamos fuera debajo del árbol.
Baja, que la cena está lista.
Me gusta esta casa.
Me gusta mucho mi trabajo en el colegio.
Me gusta el verano.
A ella le gusta el invierno.
A él le gusta cocinar para sus amigos.
Nos gusta nuestro piso nuevo.
Les gusta la montaña.
A mi hermana le gustan los caballos.
A mis amigos les gusta la playa.
¿Te gusta tu colegio nuevo?
No me gustan los lunes.
Me gustan las naranjas.
Me gustan los libros.
Me gustan las flores.
Me gustan los árboles viejos.
Me gustan los árboles del parque.
A ella le gustan los pájaros.
A él le gustan los gatos.
Nos gustan los perros.
Les gustan los árboles.
Al niño le gustan los trenes.
Me gusta pasear bajo los árboles.
Me gustaron los árboles de ese parque.
Te gustará este libro.
Creo que te gustará la ciudad.
Mis hijos están en el colegio hasta las tres.
Los niños están viendo dibujos animados.
¡A la cama, niños!
Péinate antes de ir al colegio.
Vístete, que llegamos tarde.
Cómete primero la verdura.
Dale las gracias a tu abuela.
Ordena tu habitación antes de cenar.
No grites en la biblioteca.
Silencio, el bebé está durmiendo.
Duérmete, que es muy tarde.
Te leo un cuento.
Había una vez una casita en el bosque.
Los niños están ilusionados con la Navidad.
Decoramos el árbol en diciembre.
Envolví todos los regalos.
Celebramos el cumpleaños de mi abuela en el pueblo.
La boda es en septiembre.
Invitaron a doscientas personas.
La novia llevaba un vestido blanco.
El sábado voy a una boda.
Nos han invitado a la fiesta.
Gracias por invitarme a tu boda.
Los invitados ya se han ido.
Hizo un pastel para todos.
En la fiesta la música estaba demasiado alta.
Conozco un buen restaurante cerca del río.
Tengo frío, ¿puedes cerrar la ventana?
Tengo calor, voy a abrir la puerta.
Después de comer tengo sueño.
Ella tiene prisa.
Mi abuelo siempre tiene razón.
Mi hermana pequeña tiene miedo de la oscuridad.
Tenemos suerte.
Tienes suerte de vivir aquí.
Tengo veinte años.
Ten paciencia con tu hermano.
Esta noche me apetece salir.
No me apetece cocinar.
¿Te apetece un café?
Estoy enamorado.
Se enamoró de un pintor.
Rompieron el año pasado.
Está muy enfadado con su hermano.
Hicimos las paces después de la discusión.
Ahora está tranquila.
Aquel día fui muy feliz.
La noticia me puso triste.
Ese chiste tiene mucha gracia.
No puedo parar de reírme con ese vídeo.
Me aburro en casa.
Mi jefe se enfada con mucha facilidad.
A ella le dan miedo los perros.
Estaba nervioso antes de la entrevista.
Tranquilo, todo está bien.
Estoy harto de la lluvia.
Estoy cansado de esperar.
¡Qué sorpresa verte en el mercado!
¡Qué raro, la puerta está abierta!
¡Qué aburrido es este programa!
¡Qué día tan bonito para pasear!
¡Qué pena que no puedas venir!
No estés triste, nos veremos pronto.
¡Ánimo, que es viernes!
Ha sido un día largo.
Necesito un café.
Aquí el río es muy ancho.
La iglesia está en el centro del pueblo.
Hay una fuente en la plaza.
El castillo está en lo alto de la colina.
El camino baja hasta la playa.
Cruzamos el puente a pie.
El lago está detrás de los árboles.
Por la mañana oigo a los pájaros.
En primavera las calles huelen a flores.
Está anocheciendo.
Por las tardes empieza a hacer frío.
Las tiendas están abriendo ahora.
El concierto terminó a medianoche.
Volvimos muy tarde.
Los niños ya están dormidos.
En la casa todos están dormidos.
La casa está vacía.
Ahora allí no vive nadie.
El colegio viejo ahora es un museo.
El pueblo ha cambiado mucho.
Hace años que no voy.
Deberíamos volver algún día.
Mi vecina pasea a sus tres perros por la playa todas las tardes.
La panadería de nuestra calle vende los mejores cruasanes de la ciudad.
Perdimos el último autobús y tuvimos que volver a casa en taxi.
Si el domingo hace buen tiempo, comeremos en el campo.
Mi hijo quiere una bicicleta por su cumpleaños, pero es muy cara.
El profesor nos puso muchos deberes para el fin de semana.
Siempre compro la fruta en el mercado porque es más fresca.
Antes del examen, estudié todas las noches hasta la una de la madrugada.
El puente viejo estaba cerrado, así que cruzamos el río en barca.
Mi tía cultiva lechugas, judías y pimientos en su huerto.
Cuando terminó la película, todos se levantaron y aplaudieron.
Los niños estaban muy callados porque estaban dibujando.
Deberíamos salir temprano para evitar el tráfico.
Escribió una carta larga a su abuela del pueblo.
Esta mañana la calle estaba cubierta de hojas.
El gato saltó a la mesa y se comió el queso.
Me gusta escuchar la radio mientras cocino.
Nuestros vecinos nos invitaron a cenar el sábado.
La farmacia de la esquina cierra a las nueve y media.
Esta semana he perdido las gafas tres veces.
El limonero del jardín tiene muchos limones.
Se compró una bicicleta azul con cesta.
Mi hermano arregla radios antiguas en su tiempo libre.
El camarero se olvidó de traer el agua.
El tren iba lleno, así que fuimos de pie todo el viaje.
En esta tienda hay más de veinte tipos de queso.
Llevamos a los niños a ver los barcos del puerto.
No recuerdo dónde aparqué el coche.
A la sopa le falta un poco de sal.
Mi abuelo va andando a la plaza todas las mañanas para leer el periódico.
La lluvia no paró en todo el fin de semana.
Es enfermera desde hace veinte años.
El verano pasado pintamos la valla de blanco.
Cuando hay tormenta, el perro duerme debajo de mi cama.
Voy a hacer una tortilla para cenar.
Siempre se olvida el paraguas en el tren.
Se me cayó el móvil a la piscina.
La piscina abre en junio.
Nadamos en la piscina toda la tarde.
El niño pequeño tiene miedo de las olas grandes.
Mañana me levantaré temprano para ir al mercado.
La biblioteca tiene una sala nueva para niños.
Mi madre siempre canta mientras plancha.
Desde lo alto de la montaña vimos muchas estrellas.
Me gusta tomar chocolate caliente cuando hace frío.
